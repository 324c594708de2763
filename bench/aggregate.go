package bench

import (
	"math"
	"slices"
)

// Median returns the implementation's result of several rounds with every figure replaced by its
// median over the rounds (a count missing from a round counts as 0). It returns the zero Result for no
// rounds.
func Median(rounds []Result) Result {
	if len(rounds) == 0 {
		return Result{}
	}
	phase := func(get func(Result) Phase) Phase {
		ps := make([]Phase, len(rounds))
		for i, r := range rounds {
			ps[i] = get(r)
		}
		return medianPhase(ps)
	}
	return Result{
		Implementation: rounds[0].Implementation,
		Description:    rounds[0].Description,
		Converge:       phase(func(r Result) Phase { return r.Converge }),
		Restart:        phase(func(r Result) Phase { return r.Restart }),
		RestartFloor:   medianOptional(rounds, func(r Result) *Phase { return r.RestartFloor }),
		Update:         phase(func(r Result) Phase { return r.Update }),
		Delete:         phase(func(r Result) Phase { return r.Delete }),
		Memory: Memory{
			HeapInuseBytes: int64(math.Round(medianOf(rounds, func(r Result) float64 { return float64(r.Memory.HeapInuseBytes) }))),
			HeapAllocBytes: int64(math.Round(medianOf(rounds, func(r Result) float64 { return float64(r.Memory.HeapAllocBytes) }))),
			ForeignBytes:   medianOf(rounds, func(r Result) float64 { return r.Memory.ForeignBytes }),
			ForeignObjects: rounds[0].Memory.ForeignObjects,
		},
		IdleCPUPerSecond:    medianFloatMap(rounds, func(r Result) map[string]float64 { return r.IdleCPUPerSecond }),
		RestartSeconds:      pooled(rounds, func(r Result) []float64 { return r.RestartSeconds }),
		RestartFloorSeconds: pooled(rounds, func(r Result) []float64 { return r.RestartFloorSeconds }),
	}
}

// pooled returns what get finds in every round, one round after the other; nil if none has any.
func pooled(rounds []Result, get func(Result) []float64) []float64 {
	var all []float64
	for _, r := range rounds {
		all = append(all, get(r)...)
	}
	return all
}

// medianOptional returns the median of the phases get finds in the rounds that have one, nil if none
// has.
func medianOptional(rounds []Result, get func(Result) *Phase) *Phase {
	var ps []Phase
	for _, r := range rounds {
		if p := get(r); p != nil {
			ps = append(ps, *p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	p := medianPhase(ps)
	return &p
}

func medianPhase(ps []Phase) Phase {
	return Phase{
		Seconds:            medianOf(ps, func(p Phase) float64 { return p.Seconds }),
		SettledSeconds:     medianOf(ps, func(p Phase) float64 { return p.SettledSeconds }),
		DrainedSeconds:     medianOf(ps, func(p Phase) float64 { return p.DrainedSeconds }),
		Requests:           medianInt(ps, func(p Phase) int { return p.Requests }),
		ByVerb:             medianMap(ps, func(p Phase) map[string]int { return p.ByVerb }),
		Writes:             medianMap(ps, func(p Phase) map[string]int { return p.Writes }),
		Reconciles:         medianInt(ps, func(p Phase) int { return p.Reconciles }),
		ReconcileSeconds:   medianOf(ps, func(p Phase) float64 { return p.ReconcileSeconds }),
		PlaceWaitSeconds:   medianOf(ps, func(p Phase) float64 { return p.PlaceWaitSeconds }),
		MeanLatencySeconds: medianFloatMap(ps, func(p Phase) map[string]float64 { return p.MeanLatencySeconds }),
		ServerCPUSeconds:   medianFloatMap(ps, func(p Phase) map[string]float64 { return p.ServerCPUSeconds }),
		ServerCPUAboveIdleSeconds: medianFloatMap(ps, func(p Phase) map[string]float64 {
			return p.ServerCPUAboveIdleSeconds
		}),
		BusyCores:       medianOf(ps, func(p Phase) float64 { return p.BusyCores }),
		ClusterWrites:   medianMapOrNil(ps, func(p Phase) map[string]int { return p.ClusterWrites }),
		ControllerSyncs: medianMapOrNil(ps, func(p Phase) map[string]int { return p.ControllerSyncs }),
		ControllerSyncSeconds: medianFloatMap(ps, func(p Phase) map[string]float64 {
			return p.ControllerSyncSeconds
		}),
	}
}

// medianMapOrNil is medianMap, but nil when no x has a map at all (a figure the run did not take).
func medianMapOrNil[T any](xs []T, get func(T) map[string]int) map[string]int {
	if !slices.ContainsFunc(xs, func(x T) bool { return get(x) != nil }) {
		return nil
	}
	return medianMap(xs, get)
}

func medianFloatMap[T any](xs []T, get func(T) map[string]float64) map[string]float64 {
	keys := map[string]bool{}
	for _, x := range xs {
		for k := range get(x) {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return nil
	}
	out := map[string]float64{}
	for k := range keys {
		out[k] = medianOf(xs, func(x T) float64 { return get(x)[k] })
	}
	return out
}

func medianInt[T any](xs []T, get func(T) int) int {
	return int(math.Round(medianOf(xs, func(x T) float64 { return float64(get(x)) })))
}

func medianMap[T any](xs []T, get func(T) map[string]int) map[string]int {
	keys := map[string]bool{}
	for _, x := range xs {
		for k := range get(x) {
			keys[k] = true
		}
	}
	out := map[string]int{}
	for k := range keys {
		if v := medianInt(xs, func(x T) int { return get(x)[k] }); v != 0 {
			out[k] = v
		}
	}
	return out
}

// medianOf returns the median of get over xs: the middle value, or the mean of the two middle ones.
func medianOf[T any](xs []T, get func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = get(x)
	}
	slices.Sort(vs)
	mid := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[mid]
	}
	return (vs[mid-1] + vs[mid]) / 2
}
