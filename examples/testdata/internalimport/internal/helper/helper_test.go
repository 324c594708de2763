package helper
