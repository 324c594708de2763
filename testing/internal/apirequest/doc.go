// Package apirequest classifies Kubernetes API requests by HTTP method and URL path the way the API
// server's RequestInfo does (verb, group, version, resource, subresource, namespace, name). The harness
// counts requests with it and fakes chooses the writes it answers with a conflict.
//
//	info, ok := apirequest.Parse("PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/status", false)
//	// ok: true; info.Verb: "patch", info.Resource: "deployments", info.Subresource: "status"
//	apirequest.MatchResource(info.Resource, info.Subresource, "deployments/*") // true
//
// It is internal to the testing packages.
package apirequest
