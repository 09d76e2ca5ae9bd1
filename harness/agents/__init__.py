"""Agents and their model traffic: the agent kinds, installed CLI agents, the built-in loop, the proxy, usage and cost, failures by who caused them."""
