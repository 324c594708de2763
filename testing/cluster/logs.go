package cluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tailFile returns the last n lines of the file at path (without a trailing newline). It reads
// backwards in chunks, so a large log costs only what the tail needs.
func tailFile(path string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat log: %w", err)
	}
	const chunk = 16 << 10
	var buf []byte
	offset := info.Size()
	for offset > 0 {
		size := min(int64(chunk), offset)
		offset -= size
		part := make([]byte, size)
		if _, err := f.ReadAt(part, offset); err != nil && err != io.EOF {
			return "", fmt.Errorf("read log: %w", err)
		}
		buf = append(part, buf...)
		// One newline more than lines wanted: the text after the (n+1)-th newline from the end
		// holds n complete lines, ignoring a trailing newline.
		if bytes.Count(bytes.TrimRight(buf, "\n"), []byte("\n")) >= n {
			break
		}
	}
	text := strings.TrimRight(string(buf), "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), nil
}

// formatTail renders the tail of one log in the style of tail(1) with several files:
// "==> name <==" followed by the lines.
func formatTail(path string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "==> %s <==\n", filepath.Base(path))
	text, err := tailFile(path, n)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "(%v)\n", err)
	case text == "":
		b.WriteString("(empty)\n")
	default:
		b.WriteString(text)
		b.WriteString("\n")
	}
	return b.String()
}
