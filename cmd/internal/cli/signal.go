// Package cli holds what the two programs share: signal handling and exit
// codes, the progress bar, byte counts for people.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// Interrupted is the cause of a context cancelled by a signal, and the
// error a command returns when a signal stopped it.
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode is the shell's convention for a death by the signal: 128 + its number.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// Caught lists the signals a program turns into a cancelled context, so
// that deferred clean-up (temporary files) runs before it exits.
var Caught = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

type ctxKey struct{}

// signals routes the caught signals: SIGINT to the interrupt handler when
// one is set (the chat: Ctrl-C stops a reply), everything else cancels the
// program's context with an *Interrupted cause.
type signals struct {
	mu     sync.Mutex
	onInt  func()
	cancel context.CancelCauseFunc
}

func (s *signals) deliver(sig os.Signal) {
	ss, _ := sig.(syscall.Signal)
	s.mu.Lock()
	h := s.onInt
	s.mu.Unlock()
	if ss == syscall.SIGINT && h != nil {
		h()
		return
	}
	s.cancel(&Interrupted{Signal: ss})
}

// OnInterrupt makes SIGINT call h instead of cancelling the program's
// context, until the returned function is called. Outside a context made
// by Main it does nothing (in-process tests deliver interrupts themselves).
func OnInterrupt(ctx context.Context, h func()) (restore func()) {
	s, ok := ctx.Value(ctxKey{}).(*signals)
	if !ok {
		return func() {}
	}
	s.mu.Lock()
	old := s.onInt
	s.onInt = h
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.onInt = old
		s.mu.Unlock()
	}
}

// Err returns the error a command stopped by ctx reports: the *Interrupted
// cause when a signal cancelled it, else ctx.Err().
func Err(ctx context.Context) error {
	var ie *Interrupted
	if c := context.Cause(ctx); errors.As(c, &ie) {
		return ie
	}
	return ctx.Err()
}

// Main runs cmd with a context that the caught signals cancel, prints an
// error as "name: error" to stderr and returns the exit code: 0, 1 on an
// error, 128+N when signal N stopped the command (130 for Ctrl-C).
func Main(name string, cmd *cobra.Command, args []string, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s := &signals{cancel: cancel}
	ctx = context.WithValue(ctx, ctxKey{}, s)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, Caught...)
	defer signal.Stop(ch)
	go func() {
		for sig := range ch {
			s.deliver(sig)
		}
	}()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ie *Interrupted
	if errors.As(err, &ie) || (errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &ie)) {
		fmt.Fprintf(stderr, "%s: %v\n", name, ie)
		return ie.ExitCode()
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}
