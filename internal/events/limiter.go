package events

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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

// ForgetPool drops every topic of a deleted pool ("<namespace>/<name>/..."; a poolmemory Record).
func (l *EventLimiter) ForgetPool(pool types.NamespacedName) {
	prefix := pool.String() + "/"
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if strings.HasPrefix(k, prefix) {
			delete(l.last, k)
		}
	}
}

// HoldsPool reports whether a topic of the pool is remembered.
func (l *EventLimiter) HoldsPool(pool types.NamespacedName) bool {
	prefix := pool.String() + "/"
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
