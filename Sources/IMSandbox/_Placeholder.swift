enum _PlaceholderIMSandbox {}
