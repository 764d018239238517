"""One module per screen of the app; screens lay out and bind keys, they never compute."""
