# events_of FILE: each event line of a trace's text (tr-cat's, the kernel's
# trace file, trace-cmd report's) as "CPU TS PID NAME": the [CPU] token,
# the next `S.US:` token, the pid at the end of the token before [CPU], the
# name after the time. Two texts of the same events give the same lines.
# Sourced by check.sh (and net.sh through it) and lastboot.sh.
events_of() {
	awk '{
		for (i = 2; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		if (i > NF) next
		pid = $(i - 1); sub(/.*-/, "", pid)
		for (j = i + 1; j <= NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
		if (j >= NF) next
		name = $(j + 1); sub(/:$/, "", name)
		print $i, $j, pid, name
	}' "$1"
}
