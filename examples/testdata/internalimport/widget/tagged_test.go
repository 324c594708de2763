//go:build integration

package widget

import "github.com/convergo-dev/convergo/internal/testapi"
