"""The fixed sentences the MiniLM benchmarks embed (gguf_minilm_e2e.py, ct_minilm_transformers.py)."""
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The quick brown fox jumps over the lazy dog.",
    "It rained all afternoon, so the match was postponed until Sunday.",
    "Quantization stores each weight of a neural network in a few bits.",
    "She plays the violin in the city orchestra every Friday night.",
    "The central bank raised interest rates by a quarter of a point.",
    "How do I reset my password if I no longer have access to my email?",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
    "The museum's new exhibit features paintings from the early Renaissance.",
    "Add two cups of flour and stir until the batter is smooth.",
    "The server crashed because the disk ran out of space at midnight.",
    "Children were building sandcastles on the beach while the tide came in.",
    "Mount Everest is the highest mountain above sea level.",
    "I can't believe the movie ended like that; what a twist!",
    "Please submit the quarterly report to the finance team by Thursday.",
]
