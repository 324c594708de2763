// Command web is the Welcome site: it greets NAME with "Hello <NAME>" at /hello/ on PORT.
//
// Environment:
//
//	NAME       the user to greet (required)
//	PORT       the TCP port to listen on, on all interfaces (default 8088)
//	PAGE_FILE  an HTML fragment shown under the greeting (default /etc/welcome/page.html; optional)
//	PASSWORD   the password of /private/ (optional; the page is disabled without it)
//
// It never writes files, so it runs with a read-only root file system, and it stops gracefully on
// SIGTERM.
//
//	NAME=Alice PORT=8088 go run ./examples/welcome/web
//	curl http://localhost:8088/hello/
package main
