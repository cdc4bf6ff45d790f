// Command flowebm trains and samples energy-based models with flow-assisted
// MCMC (Grenioux, Moulines, Gabrié 2023). Run "flowebm help" for the
// subcommands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/layers"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// blasOnce selects the BLAS (FLOWEBM_BLAS, default OpenBLAS where it
// loads) once per process, before any model is built.
var blasOnce sync.Once

// setGCLimit sets the Go runtime's soft memory limit (sysmem.GCLimit)
// unless GOMEMLIMIT gives one: the garbage collector then works harder as
// the heap nears it instead of letting it double past what the memory
// checks planned for.
func setGCLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if limit, ok := sysmem.GCLimit(float64(ms.Sys)); ok {
		debug.SetMemoryLimit(int64(limit))
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status: 0 on
// success, 2 on any error, which is printed to stderr as one line.
func run(args []string, stdout, stderr io.Writer) int {
	defer parentLocksFromEnv()()
	// The working folder as the system has it: a shell's $PWD names the
	// links it was reached through, and os.Getwd returns it, so that
	// filepath.Abs would build paths through them (probe 39: from a link
	// to a run's checkpoint folder, --out x landed in that folder and
	// passed the check that refuses it).
	os.Unsetenv("PWD")
	blasOnce.Do(func() {
		if _, err := graph.UseBLASFromEnv(); err != nil {
			fmt.Fprintln(stderr, "flowebm: warning:", err)
		}
		setGCLimit()
	})
	root := &cobra.Command{
		Use:           "flowebm",
		Short:         "Train and sample energy-based models with flow-assisted MCMC",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// A flag given an empty value (--data '') would silently mean its
		// default: refuse it in every command.
		PersistentPreRunE: func(cmd *cobra.Command, cmdArgs []string) error {
			for i, a := range cmdArgs {
				if a == "" && cmd.Annotations[emptyArguments] == "" { // probe 35: "open : no such file", ": not a run folder"
					return fmt.Errorf("argument %d is empty: give a path", i+1)
				}
			}
			var empty []string
			required := false // round 85 B3: "leave the flag out for its default" of a flag without one
			cmd.Flags().Visit(func(f *pflag.Flag) {
				if f.Value.String() == "" {
					empty = append(empty, "--"+f.Name)
					required = required || f.DefValue == ""
				}
			})
			if len(empty) > 0 && required {
				return fmt.Errorf("%s given an empty value: give a value (see flowebm %s --help)", strings.Join(empty, ", "), cmd.Name())
			}
			if len(empty) > 0 {
				return fmt.Errorf("%s given an empty value: give a value, or leave the flag out for its default", strings.Join(empty, ", "))
			}
			if err := noOctal(cmd, args); err != nil {
				return err
			}
			if err := checkPaths(cmd, cmdArgs); err != nil {
				return err
			}
			return addressSpaceRoom()
		},
	}
	root.SetVersionTemplate("flowebm {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return numberFlagError(err) })
	root.AddCommand(gradcheckCmd(), diagnoseCmd(), trainCmd(), reproduceCmd(), energyCmd(), convertCmd(), sampleCmd(), compareCmd(), plotCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		if errors.Is(err, syscall.EPIPE) { // what read the output is gone (| head): quiet, as a process that SIGPIPE ends
			return 128 + int(syscall.SIGPIPE)
		}
		fmt.Fprintln(stderr, "flowebm:", withoutPackagePrefixes(err.Error())+dashPathHint(err, args))
		if stopped := (stoppedError{}); errors.As(err, &stopped) {
			return stopped.exitStatus()
		}
		return 2
	}
	return 0
}

// dashPathHint says, of cobra's refusal of an unknown flag that is a file
// or folder's name (a path starting with "-"), how to give it as a path
// (round 102 B4: "unknown shorthand flag: 'd' in -dash.npy" alone); ""
// otherwise.
func dashPathHint(err error, args []string) string {
	if !strings.HasPrefix(err.Error(), "unknown shorthand flag") && !strings.HasPrefix(err.Error(), "unknown flag") {
		return ""
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") && strings.Contains(err.Error(), a) {
			if _, serr := os.Lstat(a); serr == nil {
				return fmt.Sprintf(" (%s is also a file here: give it as ./%s, or after --)", a, a)
			}
		}
	}
	return ""
}

// emptyArguments is the annotation of a command that refuses its own
// empty arguments, naming them better than the root's "argument N is
// empty" (convert, by each argument's role).
const emptyArguments = "flowebm:names-empty-arguments"

// stoppedError is the error of a command that a signal stopped: it exits
// with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129
// for SIGHUP), as when the signal's handler exits at once.
type stoppedError struct {
	sig syscall.Signal
	err error
}

func (e stoppedError) Error() string   { return e.err.Error() }
func (e stoppedError) Unwrap() error   { return e.err }
func (e stoppedError) exitStatus() int { return 128 + int(e.sig) }

// stoppedBySignal reports whether status is the exit status of a flowebm
// process that a signal stopped (stoppedError, or a handler's exit).
func stoppedBySignal(status int) bool {
	return slices.Contains([]syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}, syscall.Signal(status-128))
}

// minAddressSpace is the least address space that ulimit -v must leave
// free at start for a command to work in (the runtime maps more as it starts threads, about 150 MiB on 2 cores).
const minAddressSpace = 256 << 20

// addressSpaceRoom refuses to start under a ulimit -v that leaves the
// process no room beyond what the Go runtime, OpenBLAS and the C libraries
// map at start: every allocation would then fail, and fail as an abort
// ("fatal error: out of memory") or as a misleading error (a checkpoint's
// weights "more than the 0 supported").
func addressSpaceRoom() error {
	free, ok := sysmem.AddressSpaceFree()
	if !ok || free >= minAddressSpace {
		return nil
	}
	return fmt.Errorf("ulimit -v leaves no room to work in (%s): raise it by at least %s, or remove it", sysmem.Why(sysmem.DefaultLimit), sysmem.Bytes(minAddressSpace-free))
}

// noOctal refuses an integer flag written with a leading 0 ("010"), which
// the flag parser reads as octal (8), unlike --seeds and every config file.
func noOctal(cmd *cobra.Command, args []string) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !strings.Contains(f.Value.Type(), "int") || err != nil {
			return
		}
		for i, a := range args {
			v, ok := strings.CutPrefix(a, "--"+f.Name+"=")
			if !ok && a == "--"+f.Name && i+1 < len(args) {
				v, ok = args[i+1], true
			}
			if ok && (strings.Contains(v, "_") || len(strings.TrimLeft(v, "+-")) > 1 && strings.TrimLeft(v, "+-")[0] == '0') {
				err = fmt.Errorf("--%s %s: write the number in decimal, without leading zeros or underscores (a leading 0 would read it as octal)", f.Name, v)
				return
			}
		}
	})
	return err
}

// version describes the build: the module version or VCS revision, Go,
// the BLAS for matrix products and the vector math library, which decide
// the rounding of every result (and so the exact chains of a seed).
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("%s, %s %s/%s; BLAS: %s; vector math: %s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, graph.BLAS(), layers.VectorMath())
}

// positional is cobra's check of a command's number of arguments, from
// min to max (max < 0: no most), whose refusal names what the arguments
// are (what) and the command's usage, not cobra's "requires at least 1
// arg(s), only received 0" (probe 67 B9); hint, if not empty, follows a
// refusal of too many.
func positional(min, max int, what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch n := len(args); {
		case n < min:
			return fmt.Errorf("%s: give %s (usage: flowebm %s)", cmd.Name(), what, cmd.Use)
		case max >= 0 && n > max:
			extra := ""
			if hint != "" {
				extra = "; " + hint
			}
			return fmt.Errorf("%s: %s (%s), want %s%s (usage: flowebm %s)", cmd.Name(), count(n, "argument"), strings.Join(args, " "), what, extra, cmd.Use)
		}
		return nil
	}
}

// packagePrefixes are the prefixes flowebm's packages give their errors,
// which the command line drops (round 81 B5: "c.json: algorithms:
// train.batch_size -5, want > 0").
var packagePrefixes = regexp.MustCompile(`(^|: |\()(algorithms|experiments|config|settings|training|metrics|layers|samplers|diagnostics|checkpoint|npz|npy|onnx|data): `)

// withoutPackagePrefixes is an error message without its packages'
// prefixes, where they start it or one of its parts.
func withoutPackagePrefixes(msg string) string {
	return packagePrefixes.ReplaceAllString(msg, "$1")
}

// flagNumberError matches pflag's refusal of a number flag's value, which
// quotes Go's parser (round 81 B7: `invalid argument "-1" for "--seed"
// flag: strconv.ParseUint: parsing "-1": invalid syntax`).
var flagNumberError = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[^"]+)" flag: strconv\.Parse(Uint|Int|Float): parsing ".*": (invalid syntax|value out of range)$`)

// numberFlagError says what a number flag wants, instead of Go's parser's
// words; other errors are returned as they are.
func numberFlagError(err error) error {
	m := flagNumberError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, flag, kind, why := m[1], m[2], m[3], m[4]
	want := map[string]string{"Uint": "a whole number ≥ 0", "Int": "a whole number", "Float": "a number"}[kind]
	if why == "value out of range" {
		return fmt.Errorf("%s %s: out of range: want %s that a 64-bit %s holds", flag, value, want, map[string]string{"Uint": "unsigned integer", "Int": "integer", "Float": "float"}[kind])
	}
	return fmt.Errorf("%s %q: want %s", flag, value, want)
}
