"""The reporting layer: metric tables, figures and the report documents (Markdown, HTML,
JSON, CSV) of comparisons and studies."""
