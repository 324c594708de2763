package widget_test

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/internal/gencheck"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/internal/apirequest"
)
