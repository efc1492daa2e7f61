"""The Oh My Pi adapter (``@oh-my-pi/pi-coding-agent``, CLI ``omp``): Pi's format and what it
adds (``source``, ``normalize``, ``tools``; registered by ``adapter``)."""
