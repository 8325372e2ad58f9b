"""Package data shipped with lockwright."""
