package helper

import "github.com/convergo-dev/convergo/internal/kobj"
