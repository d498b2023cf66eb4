"""The impact report of one capture: facts (JSON), Markdown, and a self-contained HTML page."""
