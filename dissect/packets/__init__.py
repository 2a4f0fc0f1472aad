"""The capture-file and header layer: pcap and pcapng readers, link, IP and TCP headers parsed a chunk at a time."""
