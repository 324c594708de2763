package fakes

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// clientgoScheme is the scheme NewClient uses when given none: client-go's, with the built-in types.
func clientgoScheme() *runtime.Scheme { return clientgoscheme.Scheme }
