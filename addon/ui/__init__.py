"""What a person sees and presses: operators, the sidebar panels, the Add menus, the live curve,
the example trees."""
