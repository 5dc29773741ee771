//go:build !linux

package grep

// mapChunk returns an ordinary slice of n words: outside Linux the bit
// sets stay on the Go heap, and the collector frees them.
func mapChunk(n int, _ bool) chunk { return chunk{words: make([]uint64, n)} }

func unmapChunk(chunk) {}
