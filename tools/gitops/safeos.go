package main

// The os library Argo CD gives Lua scripts: os.time and os.date only (util/lua/oslib_safe.go), so a
// script can read the clock but cannot exit, run programs or touch files.

import (
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

var safeOsFunctions = map[string]lua.LGFunction{"time": osTime, "date": osDate}

// openSafeOs registers the library as the global os (called like the other lua.Open* functions).
func openSafeOs(state *lua.LState) int {
	state.Push(state.RegisterModule(lua.OsLibName, safeOsFunctions))
	return 1
}

// loadSafeOs is the loader behind require("os").
func loadSafeOs(state *lua.LState) int {
	state.Push(state.SetFuncs(state.NewTable(), safeOsFunctions))
	return 1
}

// osTime: now, or the time of a table {year, month, day, hour = 12, min = 0, sec = 0} in local time.
func osTime(state *lua.LState) int {
	if state.GetTop() == 0 {
		state.Push(lua.LNumber(time.Now().Unix()))
		return 1
	}
	table := state.CheckTable(1)
	field := func(name string, fallback int) int {
		if n, ok := table.RawGetString(name).(lua.LNumber); ok {
			return int(n)
		}
		return fallback
	}
	at := time.Date(field("year", -1), time.Month(field("month", -1)), field("day", -1),
		field("hour", 12), field("min", 0), field("sec", 0), 0, time.Local)
	state.Push(lua.LNumber(at.Unix()))
	return 1
}

// osDate(format = "%c", time = now): "!" first means UTC, "*t" a table of the fields.
func osDate(state *lua.LState) int {
	at := time.Now()
	format := "%c"
	if state.GetTop() >= 1 {
		format = state.CheckString(1)
		if rest, utc := strings.CutPrefix(format, "!"); utc {
			at, format = at.UTC(), rest
		}
		if state.GetTop() >= 2 {
			at = time.Unix(state.CheckInt64(2), 0)
		}
	}
	if strings.HasPrefix(format, "*t") {
		fields := state.NewTable()
		for name, value := range map[string]int{
			"year": at.Year(), "month": int(at.Month()), "day": at.Day(), "hour": at.Hour(),
			"min": at.Minute(), "sec": at.Second(), "wday": int(at.Weekday()) + 1, "yday": 0,
		} {
			fields.RawSetString(name, lua.LNumber(value))
		}
		fields.RawSetString("isdst", lua.LFalse)
		state.Push(fields)
		return 1
	}
	state.Push(lua.LString(strftime(at, format)))
	return 1
}

// strftime's conversions as Go layouts; an unknown one is copied as it is.
var strftimeLayouts = map[byte]string{
	'a': "Mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "02 Jan 06 15:04 MST", 'd': "02",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'P': "pm", 'S': "05",
	'x': "15/04/05", 'X': "15:04:05", 'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST",
}

func strftime(at time.Time, format string) string {
	var out strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i == len(format)-1 {
			out.WriteByte(format[i])
			continue
		}
		i++
		switch c := format[i]; {
		case c == '%':
			out.WriteByte('%')
		case c == 'w':
			out.WriteString(strconv.Itoa(int(at.Weekday())))
		case strftimeLayouts[c] != "":
			out.WriteString(at.Format(strftimeLayouts[c]))
		default:
			out.WriteByte('%')
			out.WriteByte(c)
		}
	}
	return out.String()
}
