package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// requestTotalMetric is kube-apiserver's counter of the requests it served, by verb, resource,
// subresource, component and response code, whoever sent them.
const requestTotalMetric = "apiserver_request_total"

// clusterWriteVerbs maps the verbs of requestTotalMetric that write to the bench's names for them:
// the HTTP method for create (POST), update (PUT), patch and delete; APPLY is a server-side apply
// (a PATCH of type application/apply-patch+yaml), counted apart from other patches.
var clusterWriteVerbs = map[string]string{
	"POST": "create", "CREATE": "create", "PUT": "update", "UPDATE": "update", "PATCH": "patch",
	"APPLY": "apply", "DELETE": "delete", "DELETECOLLECTION": "deletecollection",
}

// clusterWrites reads kube-apiserver's metrics through rc and returns the writes it has served so
// far, by "verb resource[/subresource]" with " (code)" appended when the response was not a 2xx
// (e.g. "update replicasets (409)" for a conflict). It counts every client's writes: the manager's,
// the driver's and the control plane's own.
func clusterWrites(ctx context.Context, rc rest.Interface) (map[string]float64, error) {
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseClusterWrites(body)
}

// parseClusterWrites sums the write samples of requestTotalMetric in Prometheus text exposition.
func parseClusterWrites(text []byte) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachSample(text, requestTotalMetric, []string{requestTotalMetric}, func(_ string, labels map[string]string, v float64) {
		verb, ok := clusterWriteVerbs[labels["verb"]]
		if !ok || labels["dry_run"] != "" {
			return
		}
		key := verb + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		if code := labels["code"]; !strings.HasPrefix(code, "2") {
			key += " (" + code + ")"
		}
		out[key] += v
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachSample calls f with the name, labels and value of every sample of Prometheus text exposition
// whose name is one of names, samples of the metric family (named in errors). Other lines are not
// read.
func eachSample(text []byte, family string, names []string, f func(name string, labels map[string]string, v float64)) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			return fmt.Errorf("parse %s sample %q: no end of labels", family, line)
		}
		labels, err := parseLabels(labelText)
		if err != nil {
			return fmt.Errorf("parse %s sample %q: %w", family, line, err)
		}
		valueText, _, _ = strings.Cut(valueText, " ") // a timestamp may follow
		v, err := strconv.ParseFloat(valueText, 64)
		if err != nil {
			return fmt.Errorf("parse %s sample %q: %w", family, line, err)
		}
		f(name, labels, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", family, err)
	}
	return nil
}

// parseLabels parses `name="value",...` with the escapes of the text format (\\, \" and \n).
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for s != "" {
		name, rest, ok := strings.Cut(s, `="`)
		if !ok {
			return nil, fmt.Errorf("label without a value in %q", s)
		}
		var value strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, fmt.Errorf("unterminated value of label %q", name)
		}
		labels[name] = value.String()
		s = strings.TrimPrefix(rest[i+1:], ",")
	}
	return labels, nil
}

// countsSince returns after minus before per key, rounded, leaving out keys that did not grow.
func countsSince(before, after map[string]float64) map[string]int {
	out := map[string]int{}
	for k := range maps.Keys(after) {
		if d := after[k] - before[k]; d > 0 {
			out[k] = int(d + 0.5)
		}
	}
	return out
}
