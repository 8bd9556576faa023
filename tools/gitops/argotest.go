package main

// argocd-test: the health_test.yaml cases of a resource_customizations tree, run as Argo CD's
// util/lua/health_test.go (TestLuaHealthScript) runs them: every directory holding a health.lua has a
// health_test.yaml; each case's inputPath is read with sigs.k8s.io/yaml into a map, the script is looked
// up by the object's group and kind as Argo CD looks up a built-in script (<group>/<kind>/health.lua,
// else the first wildcard directory, "_" standing for "*", in sorted order), run with the standard
// libraries open (as Argo CD runs built-in scripts), and the result must equal healthStatus exactly.
// Each case also runs with them closed, as an argocd-cm customization runs by default, and must give
// the same result there: the script is then usable both ways.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

type healthTests struct {
	Tests []struct {
		InputPath    string       `json:"inputPath"`
		HealthStatus healthStatus `json:"healthStatus"`
	} `json:"tests"`
}

type caseResult struct {
	Case      string        `json:"case"`
	Script    string        `json:"script"`
	Expected  healthStatus  `json:"expected"`
	BuiltIn   *healthStatus `json:"builtIn,omitempty"`   // standard libraries open
	ConfigMap *healthStatus `json:"configMap,omitempty"` // standard libraries closed
	Error     string        `json:"error,omitempty"`
	Pass      bool          `json:"pass"`
}

// customizations is a resource_customizations tree: the directories (relative, slash-separated) that
// hold a health.lua.
type customizations struct {
	root string
	dirs []string
}

func loadCustomizations(root string) (*customizations, error) {
	found := &customizations{root: root}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "health.lua" {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			found.dirs = append(found.dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(found.dirs)
	return found, err
}

// scriptFor returns the directory of the health.lua Argo CD would run for the object: <group>/<kind>
// (<kind> for the core group), else the first wildcard directory that matches.
func (c *customizations) scriptFor(obj map[string]any) (string, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	key := kind
	if group, _, found := strings.Cut(apiVersion, "/"); found {
		key = group + "/" + kind
	}
	for _, dir := range c.dirs {
		if dir == key {
			return dir, nil
		}
	}
	for _, dir := range c.dirs {
		if !strings.Contains(dir, "_") {
			continue
		}
		if matched, err := path.Match(strings.ReplaceAll(dir, "_", "*"), key); err == nil && matched {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no health.lua for %s under %s", key, c.root)
}

func (c *customizations) health(obj map[string]any, openLibs bool) (*healthStatus, string, error) {
	dir, err := c.scriptFor(obj)
	if err != nil {
		return nil, "", err
	}
	script, err := os.ReadFile(filepath.Join(c.root, dir, "health.lua"))
	if err != nil {
		return nil, dir, err
	}
	health, err := runHealthScript(obj, string(script), openLibs)
	return health, dir + "/health.lua", err
}

func runArgoTests(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: gitops-health argocd-test RESOURCE_CUSTOMIZATIONS_DIR")
	}
	tree, err := loadCustomizations(args[0])
	if err != nil {
		return err
	}
	if len(tree.dirs) == 0 {
		return fmt.Errorf("no health.lua under %s", args[0])
	}
	failed := 0
	encoder := json.NewEncoder(os.Stdout)
	for _, dir := range tree.dirs {
		results, err := tree.runDir(dir)
		if err != nil {
			return err
		}
		for _, result := range results {
			if !result.Pass {
				failed++
			}
			if err := encoder.Encode(result); err != nil {
				return err
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d case(s) failed", failed)
	}
	return nil
}

func (c *customizations) runDir(dir string) ([]caseResult, error) {
	text, err := os.ReadFile(filepath.Join(c.root, dir, "health_test.yaml"))
	if err != nil {
		return nil, err
	}
	var tests healthTests
	if err := yaml.Unmarshal(text, &tests); err != nil {
		return nil, fmt.Errorf("%s/health_test.yaml: %w", dir, err)
	}
	if len(tests.Tests) == 0 {
		return nil, fmt.Errorf("%s/health_test.yaml has no tests", dir)
	}
	results := make([]caseResult, 0, len(tests.Tests))
	for _, test := range tests.Tests {
		result := caseResult{Case: path.Join(dir, test.InputPath), Expected: test.HealthStatus}
		results = append(results, c.runCase(dir, test.InputPath, result))
	}
	return results, nil
}

func (c *customizations) runCase(dir, input string, result caseResult) caseResult {
	text, err := os.ReadFile(filepath.Join(c.root, dir, input))
	if err != nil {
		result.Error = err.Error()
		return result
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(text, &obj); err != nil {
		result.Error = err.Error()
		return result
	}
	for _, openLibs := range []bool{true, false} {
		health, script, err := c.health(obj, openLibs)
		result.Script = script
		if err != nil {
			result.Error = err.Error()
			return result
		}
		if openLibs {
			result.BuiltIn = health
		} else {
			result.ConfigMap = health
		}
	}
	result.Pass = *result.BuiltIn == result.Expected && *result.ConfigMap == result.Expected
	return result
}
