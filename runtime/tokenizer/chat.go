package tokenizer

import (
	"fmt"
	"strings"
)

// Message is one turn of a chat.
type Message struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

// Chat template families, named as llama.cpp's llm_chat_template names
// (src/llama-chat.cpp), which also accepts them in place of a Jinja template.
const (
	TemplateChatML         = "chatml"
	TemplateLlama2         = "llama2"
	TemplateLlama2Sys      = "llama2-sys"
	TemplateLlama2SysBOS   = "llama2-sys-bos"
	TemplateLlama2SysStrip = "llama2-sys-strip"
	TemplateMistralV1      = "mistral-v1"
	TemplateMistralV3      = "mistral-v3"
	TemplateMistralV3Tek   = "mistral-v3-tekken"
	TemplateMistralV7      = "mistral-v7"
	TemplatePhi3           = "phi3"
	TemplatePhi4           = "phi4"
	TemplateFalcon3        = "falcon3"
	TemplateZephyr         = "zephyr"
	TemplateGemma          = "gemma"
	TemplateVicuna         = "vicuna"
	TemplateVicunaOrca     = "vicuna-orca"
	TemplateDeepSeek       = "deepseek"
	TemplateDeepSeek2      = "deepseek2"
	TemplateDeepSeek3      = "deepseek3"
	TemplateCommandR       = "command-r"
	TemplateLlama3         = "llama3"
	TemplateLlama4         = "llama4"
	TemplateGranite        = "granite"
	TemplateOpenChat       = "openchat"
	TemplateMonarch        = "monarch"
	TemplateChatGLM3       = "chatglm3"
	TemplateChatGLM4       = "chatglm4"
	TemplateGLMEdge        = "glmedge"
)

var templateNames = map[string]bool{
	TemplateChatML: true, TemplateLlama2: true, TemplateLlama2Sys: true, TemplateLlama2SysBOS: true,
	TemplateLlama2SysStrip: true, TemplateMistralV1: true, TemplateMistralV3: true, TemplateMistralV3Tek: true,
	TemplateMistralV7: true, TemplatePhi3: true, TemplatePhi4: true, TemplateFalcon3: true, TemplateZephyr: true,
	TemplateGemma: true, TemplateVicuna: true, TemplateVicunaOrca: true, TemplateDeepSeek: true,
	TemplateDeepSeek2: true, TemplateDeepSeek3: true, TemplateCommandR: true, TemplateLlama3: true,
	TemplateLlama4: true, TemplateGranite: true, TemplateOpenChat: true, TemplateMonarch: true,
	TemplateChatGLM3: true, TemplateChatGLM4: true, TemplateGLMEdge: true,
}

// DetectTemplate names the family of a chat template as llama.cpp's
// llm_chat_detect_template does: a family name is taken as is, and a Jinja
// template is recognised by the markers it contains. An empty template is
// ChatML (llama.cpp's default). ok is false when no family fits.
func DetectTemplate(tmpl string) (name string, ok bool) {
	if tmpl == "" {
		return TemplateChatML, true
	}
	if templateNames[tmpl] {
		return tmpl, true
	}
	has := func(s string) bool { return strings.Contains(tmpl, s) }
	switch {
	case has("<|im_start|>"):
		if has("<|im_sep|>") {
			return TemplatePhi4, true
		}
		if has("<end_of_utterance>") { // SmolVLM: not ChatML
			return "", false
		}
		return TemplateChatML, true
	case strings.HasPrefix(tmpl, "mistral") || has("[INST]"):
		switch {
		case has("[SYSTEM_PROMPT]"):
			return TemplateMistralV7, true
		case has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"):
			if has(" [INST]") {
				return TemplateMistralV1, true
			}
			if has(`"[INST]"`) {
				return TemplateMistralV3Tek, true
			}
			return TemplateMistralV3, true
		case has("content.strip()"):
			return TemplateLlama2SysStrip, true
		case has("bos_token + '[INST]"):
			return TemplateLlama2SysBOS, true
		case has("<<SYS>>"):
			return TemplateLlama2Sys, true
		}
		return TemplateLlama2, true
	case has("<|assistant|>") && has("<|end|>"):
		return TemplatePhi3, true
	case has("[gMASK]<sop>"):
		return TemplateChatGLM4, true
	case has("<|assistant|>") && has("<|user|>"):
		if has("</s>") {
			return TemplateFalcon3, true
		}
		return TemplateGLMEdge, true
	case has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>"):
		return TemplateGLMEdge, true
	case has("<|user|>") && has("<|endoftext|>"):
		return TemplateZephyr, true
	case has("bos_token + message['role']"):
		return TemplateMonarch, true
	case has("<start_of_turn>"):
		return TemplateGemma, true
	case has("GPT4 Correct "):
		return TemplateOpenChat, true
	case has("USER: ") && has("ASSISTANT: "):
		if has("SYSTEM: ") {
			return TemplateVicunaOrca, true
		}
		return TemplateVicuna, true
	case has("### Instruction:") && has("<|EOT|>"):
		return TemplateDeepSeek, true
	case has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>"):
		return TemplateCommandR, true
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return TemplateLlama3, true
	case has("[gMASK]sop"):
		return TemplateChatGLM3, true
	case has("'Assistant: ' + message['content'] + eos_token"):
		return TemplateDeepSeek2, true
	case has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"):
		return TemplateDeepSeek3, true
	case has("<|start_of_role|>"):
		return TemplateGranite, true
	case has("<|header_start|>") && has("<|header_end|>"):
		return TemplateLlama4, true
	}
	return "", false
}

// ChatPrompt renders msgs with the vocabulary's chat template (detected as
// DetectTemplate does), ending with the opening of an assistant turn when
// addAssistant. The prompt carries no BOS: Encode adds it.
func (t *Tokenizer) ChatPrompt(msgs []Message, addAssistant bool) (string, error) {
	name, ok := DetectTemplate(t.v.ChatTemplate)
	if !ok {
		return "", fmt.Errorf("%w chat template %q", ErrUnsupported, abbreviate(t.v.ChatTemplate, 60))
	}
	return ApplyTemplate(name, msgs, addAssistant)
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// trimSpace trims C isspace characters, as llama-chat.cpp's trim.
func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isCSpace(s[i]) {
		i++
	}
	for j > i && isCSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// ApplyTemplate renders msgs in the named family's format, as llama.cpp's
// llm_chat_apply_template.
func ApplyTemplate(name string, msgs []Message, addAssistant bool) (string, error) {
	var b strings.Builder
	w := b.WriteString
	switch name {
	case TemplateChatML:
		for _, m := range msgs {
			w("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		if addAssistant {
			w("<|im_start|>assistant\n")
		}
	case TemplateMistralV7:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				w("[SYSTEM_PROMPT] " + m.Content + "[/SYSTEM_PROMPT]")
			case "user":
				w("[INST] " + m.Content + "[/INST]")
			default:
				w(" " + m.Content + "</s>")
			}
		}
	case TemplateMistralV1, TemplateMistralV3, TemplateMistralV3Tek:
		lead, trail := "", " "
		if name == TemplateMistralV1 {
			lead = " "
		}
		if name == TemplateMistralV3Tek {
			trail = ""
		}
		inTurn := false
		for _, m := range msgs {
			if !inTurn {
				w(lead + "[INST]" + trail)
				inTurn = true
			}
			switch m.Role {
			case "system":
				w(m.Content + "\n\n")
			case "user":
				w(m.Content + lead + "[/INST]")
			default:
				c := m.Content
				if name == TemplateMistralV3 {
					c = trimSpace(c)
				}
				w(trail + c + "</s>")
				inTurn = false
			}
		}
	case TemplateLlama2, TemplateLlama2Sys, TemplateLlama2SysBOS, TemplateLlama2SysStrip:
		sys := name != TemplateLlama2
		inTurn := true
		w("[INST] ")
		for _, m := range msgs {
			c := m.Content
			if name == TemplateLlama2SysStrip {
				c = trimSpace(c)
			}
			if !inTurn {
				inTurn = true
				if name == TemplateLlama2SysBOS {
					w("<s>[INST] ")
				} else {
					w("[INST] ")
				}
			}
			switch m.Role {
			case "system":
				if sys {
					w("<<SYS>>\n" + c + "\n<</SYS>>\n\n")
				} else {
					w(c + "\n")
				}
			case "user":
				w(c + " [/INST]")
			default:
				w(c + "</s>")
				inTurn = false
			}
		}
	case TemplatePhi3:
		for _, m := range msgs {
			w("<|" + m.Role + "|>\n" + m.Content + "<|end|>\n")
		}
		if addAssistant {
			w("<|assistant|>\n")
		}
	case TemplatePhi4:
		for _, m := range msgs {
			w("<|im_start|>" + m.Role + "<|im_sep|>" + m.Content + "<|im_end|>")
		}
		if addAssistant {
			w("<|im_start|>assistant<|im_sep|>")
		}
	case TemplateFalcon3:
		for _, m := range msgs {
			w("<|" + m.Role + "|>\n" + m.Content + "\n")
		}
		if addAssistant {
			w("<|assistant|>\n")
		}
	case TemplateZephyr:
		for _, m := range msgs {
			w("<|" + m.Role + "|>\n" + m.Content + "<|endoftext|>\n")
		}
		if addAssistant {
			w("<|assistant|>\n")
		}
	case TemplateMonarch:
		for i, m := range msgs {
			if i > 0 {
				w("<s>")
			}
			w(m.Role + "\n" + m.Content + "</s>\n")
		}
		if addAssistant {
			w("<s>assistant\n")
		}
	case TemplateChatGLM3, TemplateChatGLM4, TemplateGLMEdge:
		sep := "\n"
		switch name {
		case TemplateChatGLM3:
			w("[gMASK]sop")
			sep = "\n "
		case TemplateChatGLM4:
			w("[gMASK]<sop>")
		}
		for _, m := range msgs {
			w("<|" + m.Role + "|>" + sep + m.Content)
		}
		if addAssistant {
			w("<|assistant|>")
			if name == TemplateChatGLM4 {
				w("\n")
			}
		}
	case TemplateGemma:
		sys := ""
		for _, m := range msgs {
			if m.Role == "system" {
				sys += trimSpace(m.Content)
				continue
			}
			role := m.Role
			if role == "assistant" {
				role = "model"
			}
			w("<start_of_turn>" + role + "\n")
			if sys != "" && role != "model" {
				w(sys + "\n\n")
				sys = ""
			}
			w(trimSpace(m.Content) + "<end_of_turn>\n")
		}
		if addAssistant {
			w("<start_of_turn>model\n")
		}
	case TemplateOpenChat:
		for _, m := range msgs {
			if m.Role == "system" {
				w(m.Content + "<|end_of_turn|>")
				continue
			}
			role := m.Role
			if role != "" {
				role = strings.ToUpper(role[:1]) + role[1:]
			}
			w("GPT4 Correct " + role + ": " + m.Content + "<|end_of_turn|>")
		}
		if addAssistant {
			w("GPT4 Correct Assistant:")
		}
	case TemplateVicuna, TemplateVicunaOrca:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				if name == TemplateVicunaOrca {
					w("SYSTEM: " + m.Content + "\n")
				} else {
					w(m.Content + "\n\n")
				}
			case "user":
				w("USER: " + m.Content + "\n")
			case "assistant":
				w("ASSISTANT: " + m.Content + "</s>\n")
			}
		}
		if addAssistant {
			w("ASSISTANT:")
		}
	case TemplateDeepSeek:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				w(m.Content)
			case "user":
				w("### Instruction:\n" + m.Content + "\n")
			case "assistant":
				w("### Response:\n" + m.Content + "\n<|EOT|>\n")
			}
		}
		if addAssistant {
			w("### Response:\n")
		}
	case TemplateDeepSeek2:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				w(m.Content + "\n\n")
			case "user":
				w("User: " + m.Content + "\n\n")
			case "assistant":
				w("Assistant: " + m.Content + "<｜end▁of▁sentence｜>")
			}
		}
		if addAssistant {
			w("Assistant:")
		}
	case TemplateDeepSeek3:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				w(m.Content + "\n\n")
			case "user":
				w("<｜User｜>" + m.Content)
			case "assistant":
				w("<｜Assistant｜>" + m.Content + "<｜end▁of▁sentence｜>")
			}
		}
		if addAssistant {
			w("<｜Assistant｜>")
		}
	case TemplateCommandR:
		for _, m := range msgs {
			switch m.Role {
			case "system":
				w("<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>" + trimSpace(m.Content) + "<|END_OF_TURN_TOKEN|>")
			case "user":
				w("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>" + trimSpace(m.Content) + "<|END_OF_TURN_TOKEN|>")
			case "assistant":
				w("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>" + trimSpace(m.Content) + "<|END_OF_TURN_TOKEN|>")
			}
		}
		if addAssistant {
			w("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
		}
	case TemplateLlama3:
		for _, m := range msgs {
			w("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + trimSpace(m.Content) + "<|eot_id|>")
		}
		if addAssistant {
			w("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case TemplateLlama4:
		for _, m := range msgs {
			w("<|header_start|>" + m.Role + "<|header_end|>\n\n" + trimSpace(m.Content) + "<|eot|>")
		}
		if addAssistant {
			w("<|header_start|>assistant<|header_end|>\n\n")
		}
	case TemplateGranite:
		for _, m := range msgs {
			w("<|start_of_role|>" + m.Role + "<|end_of_role|>")
			if m.Role == "assistant_tool_call" {
				w("<|tool_call|>")
			}
			w(m.Content + "<|end_of_text|>\n")
		}
		if addAssistant {
			w("<|start_of_role|>assistant<|end_of_role|>\n")
		}
	default:
		return "", fmt.Errorf("%w chat template %q", ErrUnsupported, name)
	}
	return b.String(), nil
}
