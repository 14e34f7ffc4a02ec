package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
)

const blockSize = 1 << 20

// isoHandler serves size bytes of a synthetic ISO 9660 image, generated on the fly from one random
// block (each block stamped with its index so the content does not repeat exactly).
type isoHandler struct {
	size  int64
	block []byte
}

func newISOHandler(size int64) *isoHandler {
	block := make([]byte, blockSize)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(block); i += 8 {
		binary.LittleEndian.PutUint64(block[i:], r.Uint64())
	}
	return &isoHandler{size: size, block: block}
}

func (h *isoHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(h.size))
	w.Header().Set("ETag", `"bench"`)
	_, _ = io.Copy(w, &isoReader{h: h})
}

type isoReader struct {
	h   *isoHandler
	off int64
	buf []byte
}

func (r *isoReader) Read(p []byte) (int, error) {
	if r.off >= r.h.size {
		return 0, io.EOF
	}
	if r.buf == nil {
		r.buf = make([]byte, blockSize)
	}
	blockStart := r.off - r.off%blockSize
	inBlock := int(r.off - blockStart)
	if inBlock == 0 {
		copy(r.buf, r.h.block)
		binary.LittleEndian.PutUint64(r.buf[64:], uint64(blockStart/blockSize))
		if blockStart == 0 {
			r.buf[32768] = 1
			copy(r.buf[32769:], "CD001")
		}
	}
	n := copy(p, r.buf[inBlock:min(int64(blockSize), r.h.size-blockStart)])
	r.off += int64(n)
	return n, nil
}
