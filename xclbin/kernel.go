package xclbin

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// Address qualifiers of kernel arguments in EMBEDDED_METADATA.
const (
	ArgScalar   = 0
	ArgGlobal   = 1
	ArgConstant = 2
	ArgLocal    = 3
	ArgStream   = 4
)

// Kernel is one kernel element of the EMBEDDED_METADATA XML
// (project/platform/device/core/kernel), as xclbinutil's --add-kernel
// writes it (KernelUtilities.cxx buildXMLKernelEntry).
type Kernel struct {
	Name        string
	Language    string // "c"
	Type        string // "dpu" for the fixed PS kernels NPU designs use
	Subtype     string // extended-data subtype: "1" (ST_DPU)
	Functional  string // extended-data functional: "0" (FC_DPU)
	DPUKernelID string // extended-data dpu_kernel_id, such as "0x901"
	Args        []Arg
	Instances   []string
}

// Arg is one kernel argument: its place in the ERT command's register map.
type Arg struct {
	Name             string
	AddressQualifier int    // ArgScalar, ArgGlobal, ...
	ID               int    // argument index
	Size             int    // bytes; pointers of fixed PS kernels 8, uint32_t 4
	Offset           int    // byte offset in the argument block
	Type             string // C type, such as "uint64_t" or "void*"
}

type xmlProject struct {
	XMLName xml.Name    `xml:"project"`
	Kernels []xmlKernel `xml:"platform>device>core>kernel"`
}

type xmlKernel struct {
	Name      string       `xml:"name,attr"`
	Language  string       `xml:"language,attr"`
	Type      string       `xml:"type,attr"`
	Ext       *xmlExtended `xml:"extended-data"`
	Args      []xmlArg     `xml:"arg"`
	Instances []struct {
		Name string `xml:"name,attr"`
	} `xml:"instance"`
}

type xmlExtended struct {
	Subtype     string `xml:"subtype,attr"`
	Functional  string `xml:"functional,attr"`
	DPUKernelID string `xml:"dpu_kernel_id,attr"`
}

type xmlArg struct {
	Name             string `xml:"name,attr"`
	AddressQualifier string `xml:"addressQualifier,attr"`
	ID               string `xml:"id,attr"`
	Size             string `xml:"size,attr"`
	Offset           string `xml:"offset,attr"`
	HostOffset       string `xml:"hostOffset,attr"`
	HostSize         string `xml:"hostSize,attr"`
	Type             string `xml:"type,attr"`
}

// ParseKernels decodes the kernels of an EMBEDDED_METADATA payload.
func ParseKernels(data []byte) ([]Kernel, error) {
	var p xmlProject
	d := xml.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&p); err != nil {
		return nil, secErr(EmbeddedMetadata, d.InputOffset(), "xml: %v", err)
	}
	num := func(k, a int, what, s string) (int, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		if err != nil || v < 0 || v > 1<<31 {
			return 0, secErr(EmbeddedMetadata, 0, "kernel %d arg %d: bad %s %q", k, a, what, s)
		}
		return int(v), nil
	}
	ks := make([]Kernel, len(p.Kernels))
	for i, xk := range p.Kernels {
		k := Kernel{Name: xk.Name, Language: xk.Language, Type: xk.Type}
		if xk.Ext != nil {
			k.Subtype, k.Functional, k.DPUKernelID = xk.Ext.Subtype, xk.Ext.Functional, xk.Ext.DPUKernelID
		}
		for j, xa := range xk.Args {
			a := Arg{Name: xa.Name, Type: xa.Type}
			var err error
			if a.AddressQualifier, err = num(i, j, "addressQualifier", xa.AddressQualifier); err != nil {
				return nil, err
			}
			if xa.ID != "" { // xclbinutil leaves id empty for use-id 0
				if a.ID, err = num(i, j, "id", xa.ID); err != nil {
					return nil, err
				}
			} else {
				a.ID = -1
			}
			if a.Size, err = num(i, j, "size", xa.Size); err != nil {
				return nil, err
			}
			if a.Offset, err = num(i, j, "offset", xa.Offset); err != nil {
				return nil, err
			}
			k.Args = append(k.Args, a)
		}
		for _, in := range xk.Instances {
			k.Instances = append(k.Instances, in.Name)
		}
		ks[i] = k
	}
	return ks, nil
}

// Kernels decodes f's EMBEDDED_METADATA section.
func (f *File) Kernels() ([]Kernel, error) {
	s := f.Section(EmbeddedMetadata)
	if s == nil {
		return nil, fmt.Errorf("xclbin: %w: %s", ErrNoSection, EmbeddedMetadata)
	}
	return ParseKernels(s.Data)
}

// EncodeKernels encodes ks as an EMBEDDED_METADATA payload with the
// element and attribute order of xclbinutil's buildXMLKernelEntry.
func EncodeKernels(ks []Kernel) []byte {
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s)) // writes to a bytes.Buffer do not fail; quotes become &#34;
		return e.String()
	}
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project>\n  <platform>\n    <device>\n      <core>\n")
	for _, k := range ks {
		fmt.Fprintf(&b, "        <kernel name=\"%s\" language=\"%s\" type=\"%s\">\n", esc(k.Name), esc(k.Language), esc(k.Type))
		if k.Subtype != "" || k.Functional != "" || k.DPUKernelID != "" {
			fmt.Fprintf(&b, "          <extended-data subtype=\"%s\" functional=\"%s\" dpu_kernel_id=\"%s\"/>\n",
				esc(k.Subtype), esc(k.Functional), esc(k.DPUKernelID))
		}
		for _, a := range k.Args {
			id := strconv.Itoa(a.ID)
			if a.ID < 0 {
				id = ""
			}
			fmt.Fprintf(&b, "          <arg name=\"%s\" addressQualifier=\"%d\" id=\"%s\" size=\"0x%x\" offset=\"0x%02x\" hostOffset=\"0x0\" hostSize=\"0x%x\" type=\"%s\"/>\n",
				esc(a.Name), a.AddressQualifier, id, a.Size, a.Offset, a.Size, esc(a.Type))
		}
		for _, in := range k.Instances {
			fmt.Fprintf(&b, "          <instance name=\"%s\"/>\n", esc(in))
		}
		b.WriteString("        </kernel>\n")
	}
	b.WriteString("      </core>\n    </device>\n  </platform>\n</project>\n")
	return b.Bytes()
}
