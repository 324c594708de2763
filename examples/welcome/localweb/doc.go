// Package localweb runs the Welcome web server (examples/welcome/web) as a local process with the
// configuration the Welcome operator rendered for a Welcome, read from the live objects: the web
// container's arguments and environment (literal values, and the values of the Secret and ConfigMap
// keys it references), and the files of its ConfigMap, Secret and emptyDir volumes, written to a local
// directory that stands in for each mount path. On a cluster whose pods serve nothing (kwok's), this
// shows the page a real pod would serve.
//
// The configuration is taken as it is, with two changes that a local process needs, both through the
// mechanisms the container itself uses: a value of the environment or an argument that is a mount path,
// or a path under one, names the local directory instead (so PAGE_FILE=/etc/welcome/page.html becomes
// <dir>/page.html), and [WithPort] sets PORT, the variable the web server listens on, when the port the
// operator rendered is not the one to use on this machine. Process.Rewrites lists every such change.
// Anything the package cannot reproduce faithfully (a command other than the image's entry point,
// $(VAR) expansion, values from the downward API, sub-path mounts, other volume types) is an error, not
// an approximation. The pod's security context (user, read-only root file system) and resources are
// not reproduced: the process runs as the caller.
//
//	bin, err := localweb.Build(ctx, repoRoot, dir)
//	site := localweb.NewSite(c, types.NamespacedName{Namespace: "demo", Name: "alice"}, bin)
//	started, err := site.Sync(ctx) // after each rollout: restarts the server when its configuration changed
//	fmt.Println(site.Process().URL)
package localweb
