//go:build integration

package widget
