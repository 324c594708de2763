// Package widget may import internal packages outside of its tests: only tests are copied.
package widget
