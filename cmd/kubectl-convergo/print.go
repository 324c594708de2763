package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// noNode is the NODE of a child that does not record its node.
const noNode = "<none>"

// ownCluster is the CLUSTER of a child in the owner's own cluster (the hub). No member's name is "-",
// which is not a label value.
const ownCluster = "-"

// printTable writes t as a line about the owner's Ready condition and a table of its children. The
// table has a CLUSTER column when a child is in a member cluster.
func printTable(w io.Writer, t *Tree) error {
	owner := fmt.Sprintf("%s %s", t.Owner.Kind, namespacedName(t.Owner.Namespace, t.Owner.Name))
	switch r := t.Owner.Ready; {
	case r == nil:
		owner += ": no Ready condition"
	default:
		owner += ": Ready=" + r.Status
		if r.Reason != "" {
			owner += " (" + r.Reason + ")"
		}
		if r.Message != "" {
			owner += " " + r.Message
		}
	}
	if _, err := fmt.Fprintln(w, owner); err != nil {
		return fmt.Errorf("print tree: %w", err)
	}
	if last := lastWritten(t.Children); last != nil {
		line := "Last written " + last.Written.Time.Format(time.RFC3339)
		if last.WrittenFor != "" {
			line += ", by a reconcile for: " + last.WrittenFor
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return fmt.Errorf("print tree: %w", err)
		}
	}
	if len(t.Children) == 0 {
		_, err := fmt.Fprintln(w, "No children found (label convergo.dev/owner-uid="+t.Owner.UID+").")
		if err != nil {
			return fmt.Errorf("print tree: %w", err)
		}
		return printExternal(w, t.External)
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	members := slices.ContainsFunc(t.Children, func(c Child) bool { return c.Cluster != "" })
	header := []string{"NODE", "DEPENDS ON", "KIND", "NAME", "READY", "WRITTEN", "FOR", "CHECK", "REASON"}
	if members {
		header = slices.Insert(header, 2, "CLUSTER")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	unrecorded := false
	for _, c := range t.Children {
		node := c.Node
		if node == "" {
			node, unrecorded = noNode, true
		}
		ready := "False"
		if c.Ready {
			ready = "True"
		}
		written := "-"
		if c.Written != nil {
			written = c.Written.Time.Format(time.RFC3339)
		}
		writtenFor := c.WrittenFor
		if writtenFor == "" {
			writtenFor = "-"
		}
		row := []string{node, strings.Join(c.DependsOn, ","), c.Kind, namespacedName(c.Namespace, c.Name), ready, written, writtenFor, c.Check, c.Reason}
		if members {
			row = slices.Insert(row, 2, cmp.Or(c.Cluster, ownCluster))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print tree: %w", err)
	}
	for line := range strings.Lines(table.String()) { // no padding after the last cell of a row
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return fmt.Errorf("print tree: %w", err)
		}
	}
	if unrecorded {
		if _, err := fmt.Fprintln(w, noNode+": the child records no graph node (applied without a Graph, or not reconciled since an upgrade); listed last."); err != nil {
			return fmt.Errorf("print tree: %w", err)
		}
	}
	return printExternal(w, t.External)
}

// lastWritten returns the child written last, nil when none records a write.
func lastWritten(children []Child) *Child {
	var last *Child
	for i, c := range children {
		if c.Written != nil && (last == nil || c.Written.Time.After(last.Written.Time)) {
			last = &children[i]
		}
	}
	return last
}

// printExternal writes the table of the objects outside the cluster, if any.
func printExternal(w io.Writer, external []External) error {
	if len(external) == 0 {
		return nil
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXTERNAL NODE\tKIND\tID\tON DELETE")
	for _, e := range external {
		policy := "delete"
		if e.Keep {
			policy = "keep"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Node, e.Kind, e.ID, policy)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print tree: %w", err)
	}
	for line := range strings.Lines(table.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return fmt.Errorf("print tree: %w", err)
		}
	}
	return nil
}

// printJSON writes t as indented JSON.
func printJSON(w io.Writer, t *Tree) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("print tree as JSON: %w", err)
	}
	return nil
}
