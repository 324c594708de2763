package apirequest

import "strings"

// Info is what a request addresses and does.
type Info struct {
	// Verb is get, list, watch, create, update, patch, delete or deletecollection; for an HTTP method
	// the API server does not map to a verb, the lower-case method.
	Verb string
	// Group is the API group ("" for the core group) and Version its version.
	Group, Version string
	// Resource is the plural resource name and Subresource e.g. "status" ("" for the resource itself).
	Resource, Subresource string
	// Namespace is the namespace in the path ("" for cluster-scoped and all-namespace requests); Name is
	// the object name ("" for collections).
	Namespace, Name string
}

// namespaceSubresources are the subresources of a Namespace object, whose path looks like that of a
// namespaced collection (/api/v1/namespaces/<name>/status).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// Parse classifies a request. watch is whether its watch query parameter is set; the deprecated
// /watch/ path prefix counts as well. ok is false for paths that address no resource (discovery,
// /version, /healthz, /openapi...).
func Parse(method, path string, watch bool) (info Info, ok bool) {
	info.Verb = strings.ToLower(method)
	parts := splitPath(path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.Version = parts[1]
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.Group, info.Version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return info, false
	}
	if parts[0] == "watch" {
		watch = true
		parts = parts[1:]
		if len(parts) == 0 {
			return info, false
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if info.Resource == "namespaces" && info.Name == info.Namespace {
		info.Namespace = "" // /api/v1/namespaces/<name>[/status] addresses the Namespace itself
	}
	switch info.Verb {
	case "get", "head":
		switch {
		case watch:
			info.Verb = "watch"
		case info.Name == "":
			info.Verb = "list"
		default:
			info.Verb = "get"
		}
	case "post":
		info.Verb = "create"
	case "put":
		info.Verb = "update"
	case "delete":
		if info.Name == "" {
			info.Verb = "deletecollection"
		}
	}
	return info, true
}

// IsWrite reports whether verb changes state: create, update, patch, delete or deletecollection.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// MatchResource reports whether a request for resource and subresource matches pattern: "pods" is the
// resource itself, "pods/status" its status subresource, "pods/*" the resource with or without a
// subresource, and "" anything.
func MatchResource(resource, subresource, pattern string) bool {
	if pattern == "" {
		return true
	}
	res, sub, hasSub := strings.Cut(pattern, "/")
	if res != resource {
		return false
	}
	if !hasSub {
		return subresource == ""
	}
	return sub == "*" || sub == subresource
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
