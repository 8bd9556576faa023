"""Hard goals: the operation's shape changes, re-placing what may not stay, leadership off brokers
that may not lead, and the capacity repair with its ladder of fallbacks."""
