package main

// Argo CD's health scripts, run as Argo CD runs them (util/lua/lua.go of github.com/argoproj/argo-cd,
// read at commit 37ee0097cf851bc2dd7665fc081bbce61a7e836e; this is our own code following it):
//
//   - a gopher-lua state with the standard libraries opened only when UseOpenLibs is set (Argo CD sets it
//     for its built-in resource_customizations scripts and for argocd-cm scripts whose
//     resource.customizations.useOpenLibs.<group_kind> is true; it is off by default for argocd-cm);
//   - then, always, the package, base and table libraries and a "safe" os library with only os.time and
//     os.date (also preloaded, so `require("os")` works), called the way Argo CD calls them;
//   - a one-second context as the script's deadline, the global actionParams (an empty table for a
//     health script) and the global obj, decoded from the object's map as Argo CD decodes it;
//   - the value the script returns: a table is JSON-encoded with layeh.com/gopher-json and decoded into
//     {status, message}; a status outside Argo CD's health codes becomes Unknown with Argo CD's message;
//     nil is an empty health status; anything else is an error.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

// healthStatus is Argo CD's health.HealthStatus as health_test.yaml writes it.
type healthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

const invalidHealthStatus = "Lua returned an invalid health status"

// Argo CD's health status codes (gitops-engine pkg/health).
var healthCodes = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true,
}

// runHealthScript runs script with obj as Argo CD's VM{UseOpenLibs: openLibs}.ExecuteHealthLua does.
func runHealthScript(obj map[string]any, script string, openLibs bool) (*healthStatus, error) {
	state := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer state.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	} {
		if err := state.CallByParam(lua.P{Fn: state.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, fmt.Errorf("opening %s: %w", lib.name, err)
		}
	}
	state.PreloadModule(lua.OsLibName, loadSafeOs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	state.SetContext(ctx)
	state.SetGlobal("actionParams", state.NewTable())
	state.SetGlobal("obj", toLua(state, obj))
	fn, err := state.LoadString(script)
	if err == nil {
		state.Push(fn)
		err = state.PCall(0, lua.MultRet, nil)
	}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
		apiErr.StackTrace = "" // Argo CD shows the error without Lua's stack trace
	}
	if err != nil {
		return nil, err
	}
	return healthFrom(state.Get(-1))
}

func healthFrom(value lua.LValue) (*healthStatus, error) {
	switch value.Type() {
	case lua.LTNil:
		return &healthStatus{}, nil
	case lua.LTTable:
		encoded, err := luajson.Encode(value)
		if err != nil {
			return nil, err
		}
		var health healthStatus
		if err := json.Unmarshal(encoded, &health); err != nil {
			// An empty table encodes as []; Argo CD answers any type mismatch with an empty status.
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return &healthStatus{}, nil
			}
			return nil, err
		}
		if !healthCodes[health.Status] {
			return &healthStatus{Status: "Unknown", Message: invalidHealthStatus}, nil
		}
		return &health, nil
	default:
		return nil, fmt.Errorf("expect table output from Lua script, not %s", value.Type())
	}
}

// toLua converts an object's map into Lua values as Argo CD's decodeValue does: numbers of every Go
// type the API machinery produces become Lua numbers, json.Number a string, anything else nil.
func toLua(state *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		table := state.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(toLua(state, item))
		}
		return table
	case map[string]any:
		table := state.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), toLua(state, item))
		}
		return table
	}
	return lua.LNil
}
