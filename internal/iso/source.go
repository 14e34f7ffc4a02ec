package iso

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// ISO 9660: the primary volume descriptor starts at sector 16 (byte 32768) with a type byte followed
// by the standard identifier "CD001".
const (
	isoMagicOffset = 32769
	isoMagic       = "CD001"
	isoMinSize     = isoMagicOffset + len(isoMagic)
)

// errNotAnISO is returned by sourceReader once the bytes are known not to be an ISO 9660 image.
var errNotAnISO = errors.New("not an ISO 9660 image (no CD001 magic at byte 32769)")

// isoSniffer checks the ISO 9660 magic as bytes stream by, without buffering the stream.
type isoSniffer struct {
	seen  int64 // bytes observed so far
	magic [len(isoMagic)]byte
}

func (s *isoSniffer) observe(p []byte) {
	start, end := s.seen, s.seen+int64(len(p))
	s.seen = end
	lo, hi := max(start, isoMagicOffset), min(end, int64(isoMinSize))
	for off := lo; off < hi; off++ {
		s.magic[off-isoMagicOffset] = p[off-start]
	}
}

// decided reports whether enough bytes were seen to judge.
func (s *isoSniffer) decided() bool { return s.seen >= int64(isoMinSize) }

// valid reports whether the magic is present (false until decided).
func (s *isoSniffer) valid() bool { return s.decided() && string(s.magic[:]) == isoMagic }

// LooksLikeISO reports whether b (the first bytes of a file) carries the ISO 9660 magic.
func LooksLikeISO(b []byte) bool {
	var s isoSniffer
	s.observe(b)
	return s.valid()
}

// sourceReader wraps a download body: it hashes and counts the bytes, refuses non-ISO content as soon
// as the magic's position has passed, checks the announced length, calls onProgress (the idle-read
// watchdog) and remembers whether a failure came from the source rather than from its consumer.
type sourceReader struct {
	body       io.Reader
	expected   int64 // Content-Length, -1 when unknown
	limit      int64 // most bytes accepted (spec.iso.maxSize); 0: no limit
	onProgress func()

	hash    hash.Hash
	n       int64
	sniffer isoSniffer
	eof     bool
	srcErr  error // failure of the source itself (network, truncation, too long)
	notISO  bool
	// tooLarge: more than limit bytes arrived (a chunked body, or one longer than announced).
	tooLarge bool
}

func newSourceReader(body io.Reader, expected int64, onProgress func()) *sourceReader {
	return &sourceReader{body: body, expected: expected, onProgress: onProgress, hash: sha256.New()}
}

func (s *sourceReader) Read(p []byte) (int, error) {
	if s.notISO {
		return 0, errNotAnISO
	}
	if s.srcErr != nil {
		return 0, s.srcErr
	}
	if s.eof {
		return 0, io.EOF
	}
	n, err := s.body.Read(p)
	if n > 0 {
		s.hash.Write(p[:n])
		s.sniffer.observe(p[:n])
		s.n += int64(n)
		if s.onProgress != nil {
			s.onProgress()
		}
		if s.limit > 0 && s.n > s.limit {
			// Checked first: a body past the limit is refused as too large whatever it announced.
			s.tooLarge = true
			s.srcErr = fmt.Errorf("body larger than the limit of %d bytes", s.limit)
			return n, s.srcErr
		}
		if s.expected >= 0 && s.n > s.expected {
			s.srcErr = fmt.Errorf("body longer than its Content-Length %d", s.expected)
			return n, s.srcErr
		}
		if s.sniffer.decided() && !s.sniffer.valid() {
			s.notISO = true
			return n, errNotAnISO
		}
	}
	switch {
	case err == io.EOF:
		if s.expected >= 0 && s.n != s.expected {
			s.srcErr = fmt.Errorf("body truncated: %d of %d bytes: %w", s.n, s.expected, io.ErrUnexpectedEOF)
			return n, s.srcErr
		}
		if !s.sniffer.valid() {
			s.notISO = true
			return n, errNotAnISO
		}
		s.eof = true
	case err != nil:
		s.srcErr = err
	}
	return n, err
}

// finish makes sure the body was consumed to its end (an uploader that stops at Content-Length may
// never see EOF) and returns the source's verdict: nil only for a complete, valid ISO.
func (s *sourceReader) finish() error {
	if !s.eof && !s.notISO && s.srcErr == nil {
		var one [1]byte
		for i := 0; i < 2 && !s.eof && !s.notISO && s.srcErr == nil; i++ {
			if n, _ := s.Read(one[:]); n > 0 {
				// More bytes than the consumer took: the consumer stopped early.
				return errConsumerStopped
			}
		}
	}
	switch {
	case s.notISO:
		return errNotAnISO
	case s.srcErr != nil:
		return s.srcErr
	case !s.eof:
		return errConsumerStopped
	}
	return nil
}

// errConsumerStopped: the upload returned before reading the whole body.
var errConsumerStopped = errors.New("upload ended before the whole download was read")

// digest is the hex SHA-256 of everything read so far.
func (s *sourceReader) digest() string { return hex.EncodeToString(s.hash.Sum(nil)) }
