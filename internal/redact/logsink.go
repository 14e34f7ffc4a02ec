package redact

import (
	"github.com/go-logr/logr"
)

// Logger returns l with every message, string value and error value passed through String, so that a
// secret in an error text (a URL's token, a proxy's password) never reaches the log whatever call site
// logged it; the manager installs it around its zap logger.
func Logger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(&sink{next: l.GetSink()})
}

// sink redacts what it hands to next.
type sink struct{ next logr.LogSink }

func (s *sink) Init(info logr.RuntimeInfo) {
	// One more frame (this sink) between the caller and the wrapped sink.
	info.CallDepth++
	s.next.Init(info)
}

func (s *sink) Enabled(level int) bool { return s.next.Enabled(level) }

func (s *sink) Info(level int, msg string, kv ...any) {
	s.next.Info(level, String(msg), values(kv)...)
}

func (s *sink) Error(err error, msg string, kv ...any) {
	if err != nil {
		err = redactedError{msg: String(err.Error()), cause: err}
	}
	s.next.Error(err, String(msg), values(kv)...)
}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	return &sink{next: s.next.WithValues(values(kv)...)}
}

func (s *sink) WithName(name string) logr.LogSink { return &sink{next: s.next.WithName(name)} }

// values redacts string and error values (keys are the code's own names).
func values(kv []any) []any {
	out := make([]any, len(kv))
	for i, v := range kv {
		switch x := v.(type) {
		case string:
			if i%2 == 1 {
				v = String(x)
			}
		case error:
			v = redactedError{msg: String(x.Error()), cause: x}
		}
		out[i] = v
	}
	return out
}

// redactedError shows only the redacted text; errors.Is/As still see the cause.
type redactedError struct {
	msg   string
	cause error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.cause }
