package fixture

import "github.com/convergo-dev/convergo/internal/kobj"
