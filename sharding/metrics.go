package sharding

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reasons of convergo_shard_moves_total.
const (
	// ReasonNew: an object without a shard label claimed by the member the ring assigns it to.
	ReasonNew = "new"
	// ReasonRebalance: an object handed over by its member because the ring now assigns it to another
	// (a member joined).
	ReasonRebalance = "rebalance"
	// ReasonTakeOver: an object whose member is gone (released its Lease, was fenced, or never existed:
	// a bogus label) claimed by the member the ring assigns it to.
	ReasonTakeOver = "takeover"
)

var (
	metricMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convergo_shard_members", Help: "Members of the ring this replica counts as ready.",
	}, []string{"ring", "member"})
	metricOwned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convergo_shard_owned_objects", Help: "Objects labelled with this member (counted again within 250 ms of a change).",
	}, []string{"ring", "member"})
	metricUnassigned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convergo_shard_unassigned_objects", Help: "Objects no live member owns (counted again within 250 ms of a change).",
	}, []string{"ring", "member"})
	metricMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_shard_moves_total", Help: "Objects this member claimed or handed over, by reason.",
	}, []string{"ring", "member", "reason"})
)

func init() {
	metrics.Registry.MustRegister(metricMembers, metricOwned, metricUnassigned, metricMoves)
}
