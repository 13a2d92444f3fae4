"""Documents: files as people have them (HTML, Markdown, subtitles, PO catalogues, Word),
parsed into units of text for the model and written back with everything else as it was."""
