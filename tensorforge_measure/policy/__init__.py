"""POLICY: verdicts that exist only when their evidence exists (regression gate, right-sizing)."""
