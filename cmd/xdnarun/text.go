package main

import (
	"bytes"
	"io"
)

// utf8Writer streams generated text: it holds back an incomplete UTF-8
// sequence at the end of what it was given until the next piece completes
// it (a character split across tokens, as llama.cpp's validate_utf8), and
// writes invalid bytes as U+FFFD.
type utf8Writer struct {
	w   io.Writer
	buf []byte // [<= 3] the start of an incomplete sequence
}

// Write adds p to the text.
func (u *utf8Writer) Write(p []byte) error {
	u.buf = append(u.buf, p...)
	n := completeLen(u.buf)
	if err := u.emit(u.buf[:n]); err != nil {
		return err
	}
	u.buf = append(u.buf[:0], u.buf[n:]...)
	return nil
}

// Flush writes what is held back (an incomplete sequence becomes U+FFFD).
func (u *utf8Writer) Flush() error {
	err := u.emit(u.buf)
	u.buf = u.buf[:0]
	return err
}

func (u *utf8Writer) emit(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := u.w.Write(bytes.ToValidUTF8(b, []byte("\uFFFD"))); err != nil {
		return outErr(err)
	}
	return nil
}

// completeLen returns len(b) less an incomplete sequence at its end: a lead
// byte followed by fewer continuation bytes than it announces.
func completeLen(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back
		}
		need := 1
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if need > i {
			return len(b) - i
		}
		return len(b)
	}
	return len(b)
}

// outputError is a failed write to stdout: the program stops on it.
type outputError struct{ err error }

func (e *outputError) Error() string { return "writing the output: " + e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// outErr wraps a write error (nil stays nil).
func outErr(err error) error {
	if err == nil {
		return nil
	}
	return &outputError{err}
}
