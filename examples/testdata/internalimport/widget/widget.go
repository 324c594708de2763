// Package widget may import internal packages outside of its tests: only tests are copied.
package widget

import "github.com/convergo-dev/convergo/internal/kobj"
