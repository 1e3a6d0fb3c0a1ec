package agenttool

// containOptions say how one run is kept together: the script runner
// ([Run]) asks for it confined, [StartProcess] not.
type containOptions struct {
	records  string // where the run is recorded for [Reap]; "" for not recorded
	noCgroup bool   // no cgroup of its own even where the host may make one (tests)
	// confine asks for Landlock and a temp dir of the run's own where the
	// kernel confines: the run may write workspace and read nothing of
	// private.
	confine   bool
	workspace string
	private   []string
}
