// Command promql-series parses PromQL expressions with Prometheus's own parser and prints the metric
// names each one selects, so a test can check a dashboard's queries against what the operator exports.
//
// Input (stdin): a JSON array of expressions. Output (stdout): a JSON array, one object per expression:
// {"expr": ..., "error": "<the parser's message>"} or {"expr": ..., "metrics": ["name", ...]}, where
// metrics are the names of every vector and matrix selector (sorted, unique). A selector without a
// literal metric name (only label matchers, or a regular expression on __name__) is an error: the
// caller could not tell which series it reads.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Expr    string   `json:"expr"`
	Error   string   `json:"error,omitempty"`
	Metrics []string `json:"metrics,omitempty"`
}

func metricName(selector *parser.VectorSelector) (string, error) {
	if selector.Name != "" {
		return selector.Name, nil
	}
	for _, m := range selector.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value, nil
		}
	}
	return "", fmt.Errorf("selector %s names no metric", selector.String())
}

func inspect(expr string) result {
	out := result{Expr: expr}
	tree, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	names := map[string]bool{}
	var failure error
	parser.Inspect(tree, func(node parser.Node, _ []parser.Node) error {
		if selector, ok := node.(*parser.VectorSelector); ok && failure == nil {
			name, err := metricName(selector)
			if err != nil {
				failure = err
				return err
			}
			names[name] = true
		}
		return nil
	})
	if failure != nil {
		out.Error = failure.Error()
		return out
	}
	for name := range names {
		out.Metrics = append(out.Metrics, name)
	}
	sort.Strings(out.Metrics)
	return out
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql-series: stdin must be a JSON array of strings:", err)
		os.Exit(2)
	}
	results := make([]result, 0, len(exprs))
	for _, expr := range exprs {
		results = append(results, inspect(expr))
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "promql-series:", err)
		os.Exit(1)
	}
}
