package sim

import (
	"net/url"
	"sync"
)

// The image service's record of what it generated: assisted-service knows every discovery image it
// built for an InfraEnv (the current one and the earlier ones a regeneration replaced), so it can tell
// a host booting one of them from a host booting anything else. The world driver, which plays
// assisted-service, asks this registry by an InfraEnv's isoDownloadURL instead of downloading the image
// itself (a download would show in the server's counters, which tests assert on).
var imageRegistry = struct {
	sync.Mutex
	byBase map[string]*ISOServer
}{byBase: map[string]*ISOServer{}}

func registerImageServer(s *ISOServer) {
	imageRegistry.Lock()
	defer imageRegistry.Unlock()
	imageRegistry.byBase[s.BaseURL()] = s
}

func unregisterImageServer(s *ISOServer) {
	imageRegistry.Lock()
	defer imageRegistry.Unlock()
	if imageRegistry.byBase[s.BaseURL()] == s {
		delete(imageRegistry.byBase, s.BaseURL())
	}
}

// ImagesAt returns the hex SHA-256 of every image the server behind rawURL (an isoDownloadURL, with or
// without its query) has generated, oldest first, the current one last. ok is false when no ISOServer
// of this process serves that URL.
func ImagesAt(rawURL string) (shas []string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, false
	}
	u.RawQuery, u.Fragment = "", ""
	imageRegistry.Lock()
	s := imageRegistry.byBase[u.String()]
	imageRegistry.Unlock()
	if s == nil {
		return nil, false
	}
	return s.Generated(), true
}

// Generated returns the hex SHA-256 of every image this server has generated (SetContent replaces
// one), oldest first, the current one last.
func (s *ISOServer) Generated() []string {
	cur := s.SHA256()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]string(nil), s.history...), cur)
}
