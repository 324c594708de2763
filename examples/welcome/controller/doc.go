// Package controller is the Welcome operator's reconciler, built on Convergo.
//
// A Welcome is a graph of three children: the page (a ConfigMap), the Deployment of web servers that
// mounts it, and the Service in front of them. Children builds that graph; the reconciler applies the
// page and the Service together, the Deployment once the page exists, reports the Welcome Ready once
// the Deployment is Available, and tears it down in reverse (the Deployment, then the page and the
// Service) when the Welcome is deleted.
//
// The password never passes through the operator: spec.passwordSecretRef names a Secret key, which
// the pods read through a secretKeyRef environment variable. The operator only checks that the Secret
// exists (from a metadata-only cache, so Secret data is never held in memory) and reports a missing
// one as Stalled with reason SecretNotFound; a watch on Secrets brings the Welcome back as soon as the
// Secret appears.
//
//	if err := controller.SetupWithManager(mgr); err != nil {
//		return err
//	}
package controller
