package widget_test

import (
	"testing"

	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
	"github.com/convergo-dev/convergo/testing/schematest"
	"k8s.io/apimachinery/pkg/util/internalversion"
)
