// Package marks names the labels and annotations Convergo writes on the objects it manages, for the
// library's packages and its tools (kubectl convergo tree). Authors select an owner's children by
// ownership.OwnerUIDLabel and choose a child's deletion with apply.DeletionPolicyAnnotation; the
// other marks are the library's own record, listed with their meaning in docs/design.md ("Marks").
//
//	owner := child.GetLabels()[marks.OwnerKind]
package marks
