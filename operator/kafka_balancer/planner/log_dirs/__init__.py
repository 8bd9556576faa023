"""JBOD: which of a broker's log directories each replica sits in (the plan's last stage)."""
