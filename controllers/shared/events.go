package shared

import (
	"sync"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// refusalEventInterval is how often the same refusal of a pool (same reason) is announced again while
// it lasts; a new reason is announced at once.
const refusalEventInterval = 10 * time.Minute

// EventLimiter rate-limits a pool's refusal Events (credentials, placement, privileges, selector): one
// Event when a refusal starts or changes reason, then at most one per refusalEventInterval while it
// lasts. clear forgets a refusal once it is resolved, so its return is announced at once. The zero value
// is ready.
type EventLimiter struct {
	mu   sync.Mutex
	last map[string]limitedEvent
}

type limitedEvent struct {
	key string
	at  time.Time
}

// Allow reports whether an Event may be emitted now for topic ("<pool>/credentials"); key is what the
// Event says (its reason, or reason and message): a new key is announced at once.
func (l *EventLimiter) Allow(topic, key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]limitedEvent{}
	}
	if prev, ok := l.last[topic]; ok && prev.key == key && now.Sub(prev.at) < refusalEventInterval {
		return false
	}
	l.last[topic] = limitedEvent{key: key, at: now}
	return true
}

// Clear forgets topic's last refusal.
func (l *EventLimiter) Clear(topic string) {
	l.mu.Lock()
	delete(l.last, topic)
	l.mu.Unlock()
}

// ForgetPrefix drops every topic of a deleted pool ("<namespace>/<name>/").
func (l *EventLimiter) ForgetPrefix(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(l.last, k)
		}
	}
}

// RedactText is the redaction engine (redact.String) for a message: conditions, Events and status
// messages quote error texts of HTTP and SOAP clients, which may carry URLs with tokens.
func RedactText(msg string) string { return redact.String(msg) }
