"""The researcher dashboard: campaigns, live progress, reports, worker review, exports, launch."""
