// Command tenancy is a hub operator that places each Tenant (tenancy.convergo.dev/v1alpha1, cluster-scoped)
// in the member clusters it names: a namespace named after the tenant, its ResourceQuota and a
// RoleBinding giving the tenant's admins the cluster role "admin". Member clusters are named by
// Secrets in the hub, labelled convergo.dev/member-cluster=<name>, holding a kubeconfig under
// "kubeconfig" (the way Argo CD, Flux and Cluster API name theirs).
//
//	tenancy --member-secrets-namespace convergo-system
//
// The operator needs, in the hub, what config/rbac/role.yaml grants; in each member, the kubeconfig's
// user must create, patch and delete namespaces, resourcequotas and rolebindings, and may bind the
// cluster role "admin" (the bind verb, or every permission it grants).
package main
