"""Presentation (the lowest edge): the text report (`report`), the line saying how exact simsp has
been (`accuracy`, read from the derived accuracy.json), the timeline and reproduction pages
(`timeline/`, the only user of plotly) and Chrome/Perfetto traces (`perfetto`)."""
