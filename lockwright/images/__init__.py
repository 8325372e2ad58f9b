"""Images: ImageConfig matching, the verification policy, and cosign signatures (sign, verify)."""
