// Package finalizer adds and removes one controller's finalizer without disturbing anyone else's, and
// removes it only after the controller's cleanup has finished.
//
// Ensure and Remove send a JSON patch that touches only our entry and is guarded by a test operation:
// another controller's finalizers are never dropped, ours is never listed twice, and since no
// resourceVersion is sent, changes to the rest of the object never cause a conflict. Both make no request
// when there is nothing to do, and both update the object from the server's answer.
//
// How the API server answers these patches (measured against kube-apiserver v1.37; the integration
// tests keep checking it):
//
//   - a test for null on an absent /metadata/finalizers passes, so "test null, add the list" is the safe
//     way to add the first finalizer (a test for [] fails on an absent list); removing the last finalizer
//     leaves the list absent again;
//   - a failed test is 422 Unprocessable Entity (reason Invalid), never 409: Ensure and Remove then re-read
//     and rebuild the patch, a bounded number of times;
//   - adding a finalizer to an object being deleted is 422 Forbidden, so Ensure refuses it up front;
//   - removing the last finalizer of an object being deleted answers with the object, which is then gone.
//
// AdmissionPolicy builds a MutatingAdmissionPolicy (Kubernetes 1.36 or later) under which the API
// server adds the finalizer to every new object within the create request, so that Ensure finds it
// there and sends nothing; AdmissionPolicyBinding puts it to work. Ship both with the operator:
//
//	policy, err := finalizer.AdmissionPolicy("cache.example.com/finalizer", schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"})
//	binding := finalizer.AdmissionPolicyBinding(policy, nil) // every namespace
//
// Usage in a reconciler:
//
//	const name = "cache.example.com/finalizer"
//	if obj.GetDeletionTimestamp() != nil {
//		done, err := finalizer.Finalize(ctx, c, obj, name, func(ctx context.Context) (bool, error) {
//			return releaseExternalResources(ctx, obj)
//		})
//		if err != nil || !done {
//			return ctrl.Result{RequeueAfter: 10 * time.Second}, err
//		}
//		return ctrl.Result{}, nil
//	}
//	if _, err := finalizer.Ensure(ctx, c, obj, name); err != nil {
//		return ctrl.Result{}, err
//	}
package finalizer
