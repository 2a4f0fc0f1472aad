"""The stream layer: TCP segments reassembled into ordered byte streams per connection and direction."""
