"""Images: ImageConfig matching and the verification policy."""
